import sys

from graphunified_query.cli import main

sys.exit(main())
