"""The REST API of the game world (SPEC §6): auth, campaign set-up, state and turns."""
