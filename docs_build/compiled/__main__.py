from docs_build.compiled.driver import main

raise SystemExit(main())
