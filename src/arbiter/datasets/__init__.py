"""Datasets: load labelled examples from JSON, JSONL and CSV files, and write JSONL."""

from arbiter.datasets.loader import SUPPORTED_SUFFIXES, dump_dataset_jsonl, load_dataset

__all__ = ["SUPPORTED_SUFFIXES", "dump_dataset_jsonl", "load_dataset"]
