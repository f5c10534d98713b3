"""Next edit suggestions (docs/next-edit.md): the user's recent edits, the Zeta and chat prompts,
the model's rewritten region turned into minimal edits, and the models that answer them.

history, prompt and diff are pure functions over strings; model builds the `next_edit` entry's
model over the completion providers' HTTP code (imported only when one is configured).
"""
