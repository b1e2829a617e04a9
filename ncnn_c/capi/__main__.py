"""``python -m ncnn_c.capi --build | --cflags | --libs``."""

from . import _main

raise SystemExit(_main())
