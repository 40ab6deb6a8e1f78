from spade.cli import main

raise SystemExit(main())
