"""An alias of `graphunified` (graphunified/cli.py): the same parser, every command."""

import sys

from graphunified.cli import main

sys.exit(main())
