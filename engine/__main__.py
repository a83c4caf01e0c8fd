import sys

try:
    from engine.cli import main
except KeyboardInterrupt:   # a Ctrl-C while the engine imports: as main() says it, not a traceback
    print("stopped", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
