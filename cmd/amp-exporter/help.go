package main

// appHelp is the top of --help: what runs with no configuration at all.
const appHelp = `Prometheus exporter for the cost and behaviour of AI agents (Amp threads).

Zero configuration (no --config.file):
  Thread files: the *.json threads in the first directory of this chain
    are read, then watched:
      $AMP_THREADS_DIR              (when set)
      $XDG_DATA_HOME/amp/threads    (when XDG_DATA_HOME is set)
      ~/.local/share/amp/threads
    Older Amp versions wrote their history there. A directory that does
    not exist yet is shown as missing on / and picked up when it appears.
  Amp server: today's Amp keeps threads on ampcode.com. The server source
    (config: amp_server, enabled: auto) follows the account of your Amp
    login - $AMP_API_KEY, or the key the Amp CLI stores after 'amp login' -
    when one is found; / says whether it is on.
  Open http://localhost:9974/ to see what is watched, followed or missing
  and what has been counted so far.`
