"""`graphunified`, the one command: the pipeline's and the query side's subcommands on one parser.

The only package that sees both sides: `graphunified_query` never imports Dagster, and the parser
here is built without it; a pipeline command loads Dagster when it runs.
"""
