"""The data of the test registry (``tests/registry.py``): reference cases per family
(``<family>.py``, ``CASES``) and the workflow rows (``workflows.py``)."""
