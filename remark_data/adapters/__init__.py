"""Trainer adapters: thin shims over `remark_data.rewards`, one module per trainer.

Each row carries its own labels (union, per-responder sets, p̂, seen items and the union items'
titles), so reward functions need no catalog or database at training time.
"""
