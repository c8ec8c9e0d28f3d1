from docs_build.tpu.driver import main

raise SystemExit(main())
