"""The learned router: labels from eval results, features of a question, the stored model, and the
router `auto` uses (the learned one when a model is stored in the home, the rule router otherwise)."""
