"""Predicted figures: a model's training step on a reference GPU, from what the model and a CPU run give
(``shape``: what a step launches; ``gpu``: the step-time model fitted on the bundled reference, its intervals)."""
