from tether.cli.main import main

main()
