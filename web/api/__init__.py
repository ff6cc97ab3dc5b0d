"""The REST API of the game world (docs/api.md): auth, campaign set-up, state and turns."""
