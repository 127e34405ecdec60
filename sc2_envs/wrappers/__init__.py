"""Standard-API views of the SMAC battles: PettingZoo (``pettingzoo``) and Gymnasium (``gymnasium``)."""
