"""The suite's own files in an installed copy (``pip install .``, not editable).

pyproject.toml maps this package onto the project root and ships here what the installed package reads from the
suite's folders: ``notebooks/*.ipynb``, ``params/*.yaml``, ``data/*.csv`` and the bundled reference records
(``reference/<name>/records/``). helpers/paths.py makes this folder ``PROJECT_ROOT`` when the folder above helpers/ is
no checkout. In a checkout it holds only this file (its presence is what lists ``helpers._suite`` among the packages
setuptools finds); nothing imports it.
"""
