"""Vectors: embedders and vector stores behind one Protocol each."""
