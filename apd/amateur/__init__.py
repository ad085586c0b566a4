"""Amateur: collecting a family's probabilities and training ALM' (the fine-tuned amateur).

``collect`` (token sets and member probabilities), ``config`` / ``data`` / ``objective`` / ``train``
(the curve model, losses and training loop), ``runs`` / ``tuning`` / ``variants`` / ``pipeline``
(cached runs, lambda3, the APD variants, ``apd_model`` and the engaged variant), ``composition``
(what a collection holds).
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
