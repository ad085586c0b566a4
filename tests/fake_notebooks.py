"""A notebook for the runner's tests: a parameters cell and a body cell, as papermill expects."""


def two_cell_notebook(params: str, body: str) -> dict:
    """The nbformat 4 dict of a python3 notebook whose cells are ``params`` (tagged ``parameters``)
    and ``body``."""
    cells = [
        {
            "cell_type": "code",
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "execution_count": None,
            "outputs": [],
            "source": params,
        },
        {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [], "source": body},
    ]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
