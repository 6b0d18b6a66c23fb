"""Policy evaluation: pure inference over whole episodes."""

from navi_actor.evaluation.evaluator import EvaluationReport, evaluate_policy

__all__ = ["EvaluationReport", "evaluate_policy"]
