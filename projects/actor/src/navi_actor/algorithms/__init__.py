"""PPO learning: pure GAE and loss functions, and the learner that applies them."""
