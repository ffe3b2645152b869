"""tether: answers from a document collection with claims an agent can check."""

__version__ = "0.1.0"
