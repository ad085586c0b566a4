# The book's build graph. `make book` (Makefile) runs `apd prepare`, which writes each chapter's
# parameters file when it changed, then this file under the profile's lock: a chapter's notebook is
# executed again (papermill, `apd run`) when its notebook, its parameters, the apd sources, the lock
# file or a chapter it reads is newer than its executed notebook; then Jupyter Book renders the HTML.
PROFILE ?= default
PY ?= .venv/bin/python
OUT := _build/$(PROFILE)/book/notebooks
CHAPTERS := $(shell sed -n 's|^ *- file: notebooks/||p' _toc.yml)
SOURCES := $(shell find apd -name '*.py' -o -name '*.yml' -o -name '*.mplstyle') requirements.lock

.PHONY: html notebooks
html: notebooks
	$(PY) -m apd html --profile $(PROFILE)

notebooks: $(CHAPTERS:%=$(OUT)/%.ipynb)

$(OUT)/%.ipynb: notebooks/%.ipynb _build/$(PROFILE)/params/%.json $(SOURCES)
	$(PY) -m apd run $* --profile $(PROFILE)

# What each chapter reads from the chapters before it (their trained models, tables or results).
$(OUT)/testbed.ipynb: $(OUT)/family.ipynb docs/testbed/configurations.csv
$(OUT)/apd.ipynb: $(OUT)/family.ipynb
$(OUT)/known_answer.ipynb: $(OUT)/family.ipynb $(OUT)/apd.ipynb
$(OUT)/curves.ipynb: $(OUT)/family.ipynb $(OUT)/apd.ipynb
$(OUT)/qa.ipynb: $(OUT)/family.ipynb $(OUT)/apd.ipynb
$(OUT)/real.ipynb: $(OUT)/family.ipynb
$(OUT)/factuality.ipynb: $(OUT)/family.ipynb $(OUT)/apd.ipynb $(OUT)/real.ipynb
$(OUT)/ablations.ipynb: $(OUT)/family.ipynb $(OUT)/apd.ipynb
$(OUT)/tutorial.ipynb: $(OUT)/family.ipynb $(OUT)/apd.ipynb
$(OUT)/paper_vs_book.ipynb: $(OUT)/theorem1.ipynb $(OUT)/family.ipynb $(OUT)/testbed.ipynb $(OUT)/apd.ipynb \
	$(OUT)/known_answer.ipynb $(OUT)/curves.ipynb $(OUT)/qa.ipynb $(OUT)/real.ipynb $(OUT)/factuality.ipynb \
	$(OUT)/ablations.ipynb
