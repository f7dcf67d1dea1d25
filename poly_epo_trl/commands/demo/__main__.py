from poly_epo_trl.commands.demo.run import main

main()
