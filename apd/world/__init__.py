"""World: the synthetic knowledge world whose truth is known exactly, and the pico corpus.

``world`` (people, facts, documents, QA items, claim checker), ``corpus`` (Wikipedia leads + world,
splits, tokenizer), ``truth`` (true answer distributions, dev/test people, closeness to the truth).
"""
from apd.world import world, corpus, truth
from apd.world.world import (
    ATTRIBUTES, DISTRIBUTIONAL, BUCKETS, SPLITS, ENTITY_KINDS, OCCUPATIONS, DRINKS, HOBBIES, QUESTIONS, ANSWER_PREFIX,
    TEMPLATES, OPENERS, WorldConfig, Person, QAItem, BioPrompt, Entity, Claim, CheckedClaim, Extraction, qa_prompt,
    World,
)
from apd.world.corpus import (
    WIKI_PACKAGE, WIKI_FILE, CorpusConfig, config_hash, Article, wiki_file, clean_text, load_wiki, wiki_vocabulary,
    Corpus, build_corpus, train_tokenizer, count_tokens,
)
from apd.world.truth import (
    INV_T_GRID, PEOPLE_SPLITS, dev_test_people, dev_test_split, topk_ids, at, contrastive_topk, on_the_fly_topk,
    kl_to_truth, gold_nll, MethodDistributions, method_distributions, sample_per_bucket, best_knobs, bucket_summary,
    paired_methods, paired_table, method_label,
)


__all__ = [
    "ANSWER_PREFIX", "ATTRIBUTES", "Article", "BUCKETS", "BioPrompt", "CheckedClaim", "Claim", "Corpus",
    "CorpusConfig", "DISTRIBUTIONAL", "DRINKS", "ENTITY_KINDS", "Entity", "Extraction", "HOBBIES", "INV_T_GRID",
    "MethodDistributions", "OCCUPATIONS", "OPENERS", "PEOPLE_SPLITS", "Person", "QAItem", "QUESTIONS", "SPLITS",
    "TEMPLATES", "WIKI_FILE", "WIKI_PACKAGE", "World", "WorldConfig", "at", "best_knobs", "bucket_summary",
    "build_corpus", "clean_text", "config_hash", "contrastive_topk", "corpus", "count_tokens", "dev_test_people",
    "dev_test_split", "gold_nll", "kl_to_truth", "load_wiki", "method_distributions", "method_label",
    "on_the_fly_topk", "paired_methods", "paired_table", "qa_prompt", "sample_per_bucket", "topk_ids",
    "train_tokenizer", "truth", "wiki_file", "wiki_vocabulary", "world",
]
