import sys

from coderag_tui.cli import main

sys.exit(main())
