from kleene.runtime.evaluator import Evaluator
from kleene.runtime.tecs import Node

def step(self: Evaluator, pos: int, time: int, bits: int, tau: int) -> list[Node]: ...
