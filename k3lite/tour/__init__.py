"""The teaching layer on top: the guided tour's steps (each a question and the computation that answers it) and the
glossary. May import every layer below, figures included.
"""
