"""apd: contrastive decoding as extrapolation, and asymptotic probability decoding (APD).

Modules (import them directly, e.g. ``from apd import theory``):
theory (Theorem 1), results (the results convention), plots (house style), book (papermill +
Jupyter Book build), family (LM families), world/corpus/pretrain (the embedded pico family),
collect, curves, train, decoding (APD itself), metrics, evaluate, reference (the paper's numbers).
"""
__version__ = "0.1.0"
