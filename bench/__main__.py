from bench.index_speed import main

raise SystemExit(main())
