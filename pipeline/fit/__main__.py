import sys

from pipeline.fit.cli import main

sys.exit(main())
