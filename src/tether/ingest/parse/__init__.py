"""Parsers, one module per format (`markdown`, `html`, `pdf`, `text`, `docx`, `rst`), the
shared block builder and decoder (`blocks`), and the entry points that read one file
(`dispatch`: `parse_file`, `parse_bytes`, also exported lazily by `tether.ingest`).

What it cannot do: this package marker imports nothing (a format's parser and its library
load only when a file of that format is parsed).
"""
