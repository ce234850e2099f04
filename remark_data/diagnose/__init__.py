"""How much responder noise a dataset carries for a policy's lists: variance decomposition,
no-signal fractions, the rollouts that feed them, and the figures."""
