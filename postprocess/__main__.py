import sys

from postprocess.cli import main

sys.exit(main())
