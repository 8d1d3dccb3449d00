"""Study protocols. Each subpackage declares one study (see ``engines.platform.study``) and ships a bot."""
