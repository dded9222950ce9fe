from composer import Trainer
from composer.utils import dist
