"""World: the synthetic knowledge world whose truth is known exactly, and the pico corpus.

``world`` (people, facts, documents, QA items, claim checker), ``corpus`` (Wikipedia leads + world,
splits, tokenizer), ``truth`` (true answer distributions, dev/test people, closeness to the truth).
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.world.world
    "ATTRIBUTES": "apd.world.world", "DISTRIBUTIONAL": "apd.world.world", "BUCKETS": "apd.world.world",
    "SPLITS": "apd.world.world", "ENTITY_KINDS": "apd.world.world", "OCCUPATIONS": "apd.world.world",
    "DRINKS": "apd.world.world", "HOBBIES": "apd.world.world", "QUESTIONS": "apd.world.world",
    "ANSWER_PREFIX": "apd.world.world", "TEMPLATES": "apd.world.world", "OPENERS": "apd.world.world",
    "WorldConfig": "apd.world.world", "Person": "apd.world.world", "QAItem": "apd.world.world",
    "BioPrompt": "apd.world.world", "Entity": "apd.world.world", "Claim": "apd.world.world",
    "CheckedClaim": "apd.world.world", "Extraction": "apd.world.world", "qa_prompt": "apd.world.world",
    "World": "apd.world.world", "world": "apd.world.world",
    # apd.world.corpus
    "WIKI_PACKAGE": "apd.world.corpus", "WIKI_FILE": "apd.world.corpus", "CorpusConfig": "apd.world.corpus",
    "config_hash": "apd.world.corpus", "Article": "apd.world.corpus", "wiki_file": "apd.world.corpus",
    "clean_text": "apd.world.corpus", "load_wiki": "apd.world.corpus", "wiki_vocabulary": "apd.world.corpus",
    "Corpus": "apd.world.corpus", "build_corpus": "apd.world.corpus", "train_tokenizer": "apd.world.corpus",
    "count_tokens": "apd.world.corpus", "corpus": "apd.world.corpus",
    # apd.world.truth
    "INV_T_GRID": "apd.world.truth", "PEOPLE_SPLITS": "apd.world.truth", "dev_test_people": "apd.world.truth",
    "dev_test_split": "apd.world.truth", "topk_ids": "apd.world.truth", "at": "apd.world.truth",
    "contrastive_topk": "apd.world.truth", "on_the_fly_topk": "apd.world.truth",
    "kl_to_truth": "apd.world.truth", "gold_nll": "apd.world.truth", "MethodDistributions": "apd.world.truth",
    "method_distributions": "apd.world.truth", "sample_per_bucket": "apd.world.truth",
    "best_knobs": "apd.world.truth", "bucket_summary": "apd.world.truth", "paired_methods": "apd.world.truth",
    "paired_table": "apd.world.truth", "method_label": "apd.world.truth", "truth": "apd.world.truth",
})
