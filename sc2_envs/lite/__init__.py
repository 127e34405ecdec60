"""Lite full-game engine for Simple64 (Protoss vs the very_easy Terran bot), with no StarCraft II binary."""
