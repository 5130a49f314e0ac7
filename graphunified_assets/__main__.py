import sys

from graphunified_assets.cli import main

sys.exit(main())
