"""Not a package: this folder holds the source of ``osbp.<folder>``, the one name it is imported by."""

_FOLDER = __name__.rpartition(".")[2]
raise ImportError(
    f"{_FOLDER}/ is a source folder: import osbp.{_FOLDER}. If 'import osbp.{_FOLDER}' led here, the current "
    "folder is the one above an osbp checkout named 'osbp': run from another folder, or with 'python -P'."
)
