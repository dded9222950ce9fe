import sys

from maple_ci.center.gate import main

sys.exit(main())
