"""GENERATED code: models and the dispatch table. Do not edit; run `python -m codegen`."""
