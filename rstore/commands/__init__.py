"""Layer 4: argv -> stream semantics -> RESP2-shaped replies.

Each module registers the commands of one family in :data:`~rstore.commands.registry.COMMANDS`
when it is imported; :func:`~rstore.commands.registry.lookup` imports the module of a command
the first time that command is run (see ``registry.COMMAND_MODULES``), so running XLEN does not
load the code of DUMP or XCLAIM.
"""
