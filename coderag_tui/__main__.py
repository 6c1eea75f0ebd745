from coderag_tui.cli import entry

entry()
