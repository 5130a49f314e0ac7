"""The query engine as a local HTTP service (`python -m graphunified_query serve`).

`POST /ask` and `POST /retrieve` answer with the object `ask --json` prints (`QueryResponse.as_dict`,
one function for both); `GET /health`, `GET /strategies` and the generated `GET /openapi.json`
describe the loaded index. It binds to 127.0.0.1 unless told otherwise.
"""
