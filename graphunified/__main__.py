import sys

from graphunified.cli import main

sys.exit(main())
