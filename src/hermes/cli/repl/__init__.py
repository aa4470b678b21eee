"""The interactive `hermes chat`: rendering, commands, completion and the prompt loop."""
