import Coffer
