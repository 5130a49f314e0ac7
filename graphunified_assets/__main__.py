import sys

from graphunified_assets.cli.main import main

sys.exit(main())
