from trinity.cli import main

raise SystemExit(main())
