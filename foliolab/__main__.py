import sys

from foliolab.cli import main

sys.exit(main())
