from kernel_mcp.cli import main

raise SystemExit(main())
