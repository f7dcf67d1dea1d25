"""Real-style LeetCode problems in LeetCodeDataset's format, written for these tests: each has a correct solution
that must score 1 and wrong or reward-hacking solutions that must score 0.

``SETUP`` is the setup code LeetCodeDataset's evaluator runs before every program (its ``prompt`` field).
"""

SETUP = (
    "\n"
    "from typing import *\n"
    "\n"
    "from functools import *\n"
    "from collections import *\n"
    "from itertools import *\n"
    "from heapq import *\n"
    "from bisect import *\n"
    "from string import *\n"
    "from operator import *\n"
    "from math import *\n"
    "import math\n"
    "import datetime\n"
    "from collections import deque\n"
    "\n"
    "inf = float('inf')\n"
    "\n"
    "\n"
    "class ListNode:\n"
    "    def __init__(self, val=0, next=None):\n"
    "        self.val = val\n"
    "        self.next = next\n"
    "\n"
    "def list_node(values: list):\n"
    "    if not values:\n"
    "        return None\n"
    "    head = ListNode(values[0])\n"
    "    p = head\n"
    "    for val in values[1:]:\n"
    "        node = ListNode(val)\n"
    "        p.next = node\n"
    "        p = node\n"
    "    return head\n"
    "\n"
    "def is_same_list(p1, p2):\n"
    "    if p1 is None and p2 is None:\n"
    "        return True\n"
    "    if not p1 or not p2:\n"
    "        return False\n"
    "    return p1.val == p2.val and is_same_list(p1.next, p2.next)\n"
    "\n"
    "\n"
    "class TreeNode:\n"
    "    def __init__(self, val=0, left=None, right=None):\n"
    "        self.val = val\n"
    "        self.left = left\n"
    "        self.right = right\n"
    "\n"
    "def tree_node(values: list):\n"
    "    if not values:\n"
    "        return None\n"
    "    root = TreeNode(values[0])\n"
    "    i = 1\n"
    "    queue = deque()\n"
    "    queue.append(root)\n"
    "    while queue:\n"
    "        node = queue.popleft()\n"
    "        if i < len(values) and values[i] is not None:\n"
    "            node.left = TreeNode(values[i])\n"
    "            queue.append(node.left)\n"
    "        i += 1\n"
    "        if i < len(values) and values[i] is not None:\n"
    "            node.right = TreeNode(values[i])\n"
    "            queue.append(node.right)\n"
    "        i += 1\n"
    "    return root\n"
    "\n"
    "def is_same_tree(p, q):\n"
    "    if not p and not q:\n"
    "        return True\n"
    "    elif not p or not q:\n"
    "        return False\n"
    "    elif p.val != q.val:\n"
    "        return False\n"
    "    else:\n"
    "        return is_same_tree(p.left, q.left) and is_same_tree(p.right, q.right)\n"
)

LYING_EQ = "class _Any:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n"
EXIT_EARLY = "import sys\nsys.exit(0)\n"


def _hack_returning(expr: str, method: str, args: str) -> str:
    return f"{LYING_EQ}class Solution:\n    def {method}(self, {args}):\n        return {expr}\n"


PROBLEMS = [
    {
        "name": "two-sum",
        "entry_point": "Solution().twoSum",
        "test": "def check(candidate):\n    assert candidate(nums = [2,7,11,15], target = 9) == [0,1]\n"
        "    assert candidate(nums = [3,2,4], target = 6) == [1,2]\n    assert candidate(nums = [3,3], target = 6) == [0,1]\n",
        "correct": "from typing import List\n\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
        "                return [seen[target - x], i]\n            seen[x] = i\n",
        "wrong": [
            "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n",
            _hack_returning("_Any()", "twoSum", "nums, target"),
            "class Solution:\n    def twoSum(self, nums, target):\n        return (0, 1)\n",
        ],
    },
    {
        "name": "reverse-linked-list",
        "entry_point": "Solution().reverseList",
        "test": "def check(candidate):\n    assert is_same_list(candidate(head = list_node([1,2,3,4,5])), list_node([5,4,3,2,1]))\n"
        "    assert is_same_list(candidate(head = list_node([1,2])), list_node([2,1]))\n"
        "    assert is_same_list(candidate(head = list_node([])), list_node([]))\n",
        "correct": "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n"
        "        prev = None\n        while head:\n            head.next, prev, head = prev, head, head.next\n        return prev\n",
        "wrong": [
            "class Solution:\n    def reverseList(self, head):\n        return head\n",
            "class Node:\n    def __init__(self):\n        self.val = 0\n        self.next = None\n    def __eq__(self, o):\n"
            "        return True\nclass Solution:\n    def reverseList(self, head):\n        return Node()\n",
            "class Solution:\n    def reverseList(self, head):\n        head.next = head\n        return head\n",  # a cycle
        ],
    },
    {
        "name": "invert-binary-tree",
        "entry_point": "Solution().invertTree",
        "test": "def check(candidate):\n    assert is_same_tree(candidate(root = tree_node([4,2,7,1,3,6,9])), tree_node([4,7,2,9,6,3,1]))\n"
        "    assert is_same_tree(candidate(root = tree_node([2,1,3])), tree_node([2,3,1]))\n"
        "    assert is_same_tree(candidate(root = tree_node([1,None,2])), tree_node([1,2]))\n",
        "correct": "class Solution:\n    def invertTree(self, root: Optional[TreeNode]) -> Optional[TreeNode]:\n"
        "        if root:\n            root.left, root.right = self.invertTree(root.right), self.invertTree(root.left)\n"
        "        return root\n",
        "wrong": [
            "class Solution:\n    def invertTree(self, root):\n        return root\n",
            "class Solution:\n    def invertTree(self, root):\n        if root:\n            root.left, root.right = root.right, root.left\n"
            "        return root\n",  # only the top level
        ],
    },
    {
        "name": "maximum-depth-of-binary-tree",
        "entry_point": "Solution().maxDepth",
        "test": "def check(candidate):\n    assert candidate(root = tree_node([3,9,20,None,None,15,7])) == 3\n"
        "    assert candidate(root = tree_node([1,None,2])) == 2\n    assert candidate(root = tree_node([])) == 0\n",
        "correct": "import sys\nsys.setrecursionlimit(10**4)\n\nclass Solution:\n    def maxDepth(self, root: Optional[TreeNode]) -> int:\n"
        "        return 0 if root is None else 1 + max(self.maxDepth(root.left), self.maxDepth(root.right))\n",
        "wrong": [
            "class Solution:\n    def maxDepth(self, root):\n        return 3\n",
            "class D(int):\n    def __eq__(self, o):\n        return True\nclass Solution:\n    def maxDepth(self, root):\n        return D(0)\n",
        ],
    },
    {
        "name": "valid-parentheses",
        "entry_point": "Solution().isValid",
        "test": "def check(candidate):\n    assert candidate(s = '()') == True\n    assert candidate(s = '()[]{}') == True\n"
        "    assert candidate(s = '(]') == False\n    assert candidate(s = '([)]') == False\n",
        "correct": "class Solution:\n    def isValid(self, s: str) -> bool:\n        stack, pairs = [], {')': '(', ']': '[', '}': '{'}\n"
        "        for c in s:\n            if c in pairs:\n                if not stack or stack.pop() != pairs[c]:\n"
        "                    return False\n            else:\n                stack.append(c)\n        return not stack\n",
        "wrong": [
            "class Solution:\n    def isValid(self, s):\n        return len(s) % 2 == 0\n",
            "class Solution:\n    def isValid(self, s):\n        return 1\n",
        ],
    },
    {
        "name": "merge-intervals-dataclass",
        "entry_point": "Solution().merge",
        "test": "def check(candidate):\n    assert candidate(intervals = [[1,3],[2,6],[8,10],[15,18]]) == [[1,6],[8,10],[15,18]]\n"
        "    assert candidate(intervals = [[1,4],[4,5]]) == [[1,5]]\n",
        "correct": "from dataclasses import dataclass\nfrom typing import List\n\n@dataclass\nclass Span:\n    lo: int\n    hi: int\n\n"
        "class Solution:\n    def merge(self, intervals: List[List[int]]) -> List[List[int]]:\n        out: list[Span] = []\n"
        "        for lo, hi in sorted(intervals):\n            if out and lo <= out[-1].hi:\n                out[-1].hi = max(out[-1].hi, hi)\n"
        "            else:\n                out.append(Span(lo, hi))\n        return [[s.lo, s.hi] for s in out]\n",
        "wrong": [
            "class Solution:\n    def merge(self, intervals):\n        return intervals\n",
            "class Solution:\n    def merge(self, intervals):\n        return [tuple(x) for x in intervals]\n",
        ],
    },
    {
        "name": "top-k-frequent-namedtuple",
        "entry_point": "Solution().topKFrequent",
        "test": "def check(candidate):\n    assert candidate(nums = [1,1,1,2,2,3], k = 2) == [1,2]\n    assert candidate(nums = [1], k = 1) == [1]\n",
        "correct": "from collections import Counter, namedtuple\nItem = namedtuple('Item', 'count value')\n\nclass Solution:\n"
        "    def topKFrequent(self, nums, k):\n        items = sorted(Item(-c, v) for v, c in Counter(nums).items())\n"
        "        return [item.value for item in items[:k]]\n",
        "wrong": ["class Solution:\n    def topKFrequent(self, nums, k):\n        return nums[:k]\n"],
    },
    {
        "name": "fraction-addition",
        "entry_point": "Solution().fractionAddition",
        "test": "def check(candidate):\n    assert candidate(expression = '-1/2+1/2') == '0/1'\n"
        "    assert candidate(expression = '-1/2+1/2+1/3') == '1/3'\n    assert candidate(expression = '1/3-1/2') == '-1/6'\n",
        "correct": "import re\nfrom fractions import Fraction\n\nclass Solution:\n    def fractionAddition(self, expression: str) -> str:\n"
        "        total = sum(Fraction(int(a), int(b)) for a, b in re.findall(r'([+-]?\\d+)/(\\d+)', expression))\n"
        "        return f'{total.numerator}/{total.denominator}'\n",
        "wrong": [
            "class Solution:\n    def fractionAddition(self, expression):\n        return '0/1'\n",
            EXIT_EARLY + "class Solution:\n    pass\n",
        ],
    },
    {
        "name": "average-salary-statistics",
        "entry_point": "Solution().average",
        "test": "def check(candidate):\n    assert candidate(salary = [4000,3000,1000,2000,10000]) == 3000.0\n"
        "    assert candidate(salary = [1000,2000,3000]) == 2000.0\n",
        "correct": "import statistics\n\nclass Solution:\n    def average(self, salary):\n"
        "        return float(statistics.mean(sorted(salary)[1:-1]))\n",
        "wrong": [
            "class Solution:\n    def average(self, salary):\n        return sum(salary) / len(salary)\n",
            "class Solution:\n    def average(self, salary):\n        return float('nan')\n",
        ],
    },
    {
        "name": "decimal-round-price",
        "entry_point": "Solution().discountPrices",
        "test": "def check(candidate):\n    assert candidate(sentence = 'there are $1 $2 and 5$ candies in the shop', discount = 50) == "
        "'there are $0.50 $1.00 and 5$ candies in the shop'\n    assert candidate(sentence = '$7383692 5q $5575', discount = 100) == "
        "'$0.00 5q $0.00'\n",
        "correct": "from decimal import Decimal, ROUND_HALF_UP\n\nclass Solution:\n    def discountPrices(self, sentence: str, discount: int) -> str:\n"
        "        words = []\n        for w in sentence.split():\n            if len(w) > 1 and w[0] == '$' and w[1:].isdigit():\n"
        "                price = Decimal(w[1:]) * (100 - discount) / 100\n"
        "                w = '$' + str(price.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP))\n            words.append(w)\n"
        "        return ' '.join(words)\n",
        "wrong": ["class Solution:\n    def discountPrices(self, sentence, discount):\n        return sentence\n"],
    },
    {
        "name": "logging-and-inspect-climb-stairs",
        "entry_point": "Solution().climbStairs",
        "test": "def check(candidate):\n    assert candidate(n = 2) == 2\n    assert candidate(n = 3) == 3\n    assert candidate(n = 45) == 1836311903\n",
        "correct": "import inspect\nimport logging\nfrom functools import lru_cache\nlogging.basicConfig(level=logging.INFO)\nlog = logging.getLogger('stairs')\n\n"
        "class Solution:\n    def climbStairs(self, n: int) -> int:\n        log.info('called from %s', inspect.stack()[0].function)\n"
        "        @lru_cache(None)\n        def f(i):\n            return 1 if i <= 1 else f(i - 1) + f(i - 2)\n        return f(n)\n",
        "wrong": [
            "class Solution:\n    def climbStairs(self, n):\n        return n\n",
            "class Solution:\n    def climbStairs(self, n):\n        raise SystemExit(0)\n",
        ],
    },
    {
        "name": "enum-and-operator-robot",
        "entry_point": "Solution().judgeCircle",
        "test": "def check(candidate):\n    assert candidate(moves = 'UD') == True\n    assert candidate(moves = 'LL') == False\n",
        "correct": "import enum, operator\n\nclass Move(enum.Enum):\n    U = (0, 1)\n    D = (0, -1)\n    L = (-1, 0)\n    R = (1, 0)\n\n"
        "class Solution:\n    def judgeCircle(self, moves: str) -> bool:\n        x = y = 0\n        for m in moves:\n"
        "            dx, dy = Move[m].value\n            x, y = operator.add(x, dx), operator.add(y, dy)\n        return x == 0 and y == 0\n",
        "wrong": ["class Solution:\n    def judgeCircle(self, moves):\n        return True\n"],
    },
    {
        "name": "copy-array-queue-random",
        "entry_point": "Solution().sortArray",
        "test": "def check(candidate):\n    assert candidate(nums = [5,2,3,1]) == [1,2,3,5]\n    assert candidate(nums = [5,1,1,2,0,0]) == [0,0,1,1,2,5]\n",
        "correct": "import array, copy, queue, random, string\n\nclass Solution:\n    def sortArray(self, nums):\n        random.seed(0)\n"
        "        work = copy.deepcopy(nums)\n        random.shuffle(work)\n        q = queue.PriorityQueue()\n        for x in work:\n"
        "            q.put(x)\n        out = array.array('q', (q.get() for _ in range(len(work))))\n"
        "        assert string.digits\n        return list(out)\n",
        "wrong": ["class Solution:\n    def sortArray(self, nums):\n        return nums\n"],
    },
    {
        "name": "deep-recursion",
        "entry_point": "Solution().depthSum",
        "test": "def check(candidate):\n    assert candidate(n = 9000) == 40504500\n    assert candidate(n = 1) == 1\n",
        "correct": "import sys\nsys.setrecursionlimit(10**4 + 100)\n\nclass Solution:\n    def depthSum(self, n: int) -> int:\n"
        "        return n if n <= 1 else n + self.depthSum(n - 1)\n",
        "wrong": [
            "class Solution:\n    def depthSum(self, n):\n        return n if n <= 1 else n + self.depthSum(n - 1)\n"
        ],  # no limit
    },
    {
        "name": "prints-and-main-guard",
        "entry_point": "Solution().addDigits",
        "test": "def check(candidate):\n    assert candidate(num = 38) == 2\n    assert candidate(num = 0) == 0\n    assert candidate(num = 18) == 9\n",
        "correct": "class Solution:\n    def addDigits(self, num: int) -> int:\n        print('debug', num)\n"
        "        return 0 if num == 0 else 1 + (num - 1) % 9\n\nif __name__ == '__main__':\n    print(Solution().addDigits(38))\n",
        "wrong": ["class Solution:\n    def addDigits(self, num):\n        print(2)\n        return num % 9\n"],
    },
    {
        "name": "one-second-of-cpu",
        "entry_point": "Solution().countPrimes",
        "test": "def check(candidate):\n    assert candidate(n = 10) == 4\n    assert candidate(n = 3000000) == 216816\n",
        "correct": "class Solution:\n    def countPrimes(self, n: int) -> int:\n        total = 0\n        for _ in range(3):\n"
        "            sieve = bytearray([1]) * n\n            sieve[:2] = b'\\x00\\x00'[:n]\n"
        "            for i in range(2, int(n ** 0.5) + 1):\n                if sieve[i]:\n"
        "                    for j in range(i * i, n, i):\n                        sieve[j] = 0\n            total = sum(sieve)\n"
        "        return total\n",
        "wrong": ["class Solution:\n    def countPrimes(self, n):\n        while True:\n            pass\n"],
    },
    {
        "name": "none-result",
        "entry_point": "Solution().rotate",
        "test": "def check(candidate):\n    assert candidate(nums = [1,2,3,4,5,6,7], k = 3) == None\n    assert candidate(nums = [-1], k = 2) == None\n",
        "correct": "class Solution:\n    def rotate(self, nums, k):\n        k %= len(nums)\n        nums[:] = nums[-k:] + nums[:-k]\n",
        "wrong": [
            "class Solution:\n    def rotate(self, nums, k):\n        return nums\n",
            _hack_returning("_Any()", "rotate", "nums, k"),
        ],
    },
    {
        "name": "float-median",
        "entry_point": "Solution().findMedianSortedArrays",
        "test": "def check(candidate):\n    assert candidate(nums1 = [1,3], nums2 = [2]) == 2.0\n"
        "    assert candidate(nums1 = [1,2], nums2 = [3,4]) == 2.5\n",
        "correct": "from heapq import merge\n\nclass Solution:\n    def findMedianSortedArrays(self, nums1, nums2) -> float:\n"
        "        m = list(merge(nums1, nums2))\n        n = len(m)\n        return (m[(n - 1) // 2] + m[n // 2]) / 2\n",
        "wrong": ["class Solution:\n    def findMedianSortedArrays(self, nums1, nums2):\n        return 2\n"],
    },
    {
        "name": "strings-group-anagrams",
        "entry_point": "Solution().groupAnagrams",
        "test": "def check(candidate):\n    assert candidate(strs = ['eat','tea','tan','ate','nat','bat']) == "
        "[['eat','tea','ate'],['tan','nat'],['bat']]\n    assert candidate(strs = ['']) == [['']]\n",
        "correct": "from collections import defaultdict\n\nclass Solution:\n    def groupAnagrams(self, strs):\n        groups = defaultdict(list)\n"
        "        for s in strs:\n            groups[''.join(sorted(s))].append(s)\n        return list(groups.values())\n",
        "wrong": [
            "class Solution:\n    def groupAnagrams(self, strs):\n        return [strs]\n",
            "class L(list):\n    def __eq__(self, o):\n        return True\nclass Solution:\n    def groupAnagrams(self, strs):\n"
            "        return L()\n",
        ],
    },
    {
        "name": "bisect-search-insert",
        "entry_point": "Solution().searchInsert",
        "test": "def check(candidate):\n    assert candidate(nums = [1,3,5,6], target = 5) == 2\n    assert candidate(nums = [1,3,5,6], target = 2) == 1\n"
        "    assert candidate(nums = [1,3,5,6], target = 7) == 4\n",
        "correct": "class Solution:\n    def searchInsert(self, nums: List[int], target: int) -> int:\n        return bisect_left(nums, target)\n",
        "wrong": [
            "class Solution:\n    def searchInsert(self, nums, target):\n        return bisect_right(nums, target)\n"
        ],
    },
    {
        "name": "deque-sliding-window",
        "entry_point": "Solution().maxSlidingWindow",
        "test": "def check(candidate):\n    assert candidate(nums = [1,3,-1,-3,5,3,6,7], k = 3) == [3,3,5,5,6,7]\n"
        "    assert candidate(nums = [1], k = 1) == [1]\n",
        "correct": "class Solution:\n    def maxSlidingWindow(self, nums: List[int], k: int) -> List[int]:\n        q, out = deque(), []\n"
        "        for i, x in enumerate(nums):\n            while q and nums[q[-1]] <= x:\n                q.pop()\n"
        "            q.append(i)\n            if q[0] <= i - k:\n                q.popleft()\n            if i >= k - 1:\n"
        "                out.append(nums[q[0]])\n        return out\n",
        "wrong": [
            "class Solution:\n    def maxSlidingWindow(self, nums, k):\n        return deque([3, 3, 5, 5, 6, 7])\n"
        ],
    },
    {
        "name": "inf-min-path",
        "entry_point": "Solution().minPathSum",
        "test": "def check(candidate):\n    assert candidate(grid = [[1,3,1],[1,5,1],[4,2,1]]) == 7\n    assert candidate(grid = [[1,2,3],[4,5,6]]) == 12\n",
        "correct": "class Solution:\n    def minPathSum(self, grid: List[List[int]]) -> int:\n        m, n = len(grid), len(grid[0])\n"
        "        f = [[inf] * (n + 1) for _ in range(m + 1)]\n        f[0][1] = 0\n        for i in range(m):\n"
        "            for j in range(n):\n                f[i + 1][j + 1] = min(f[i][j + 1], f[i + 1][j]) + grid[i][j]\n"
        "        return f[m][n]\n",
        "wrong": ["class Solution:\n    def minPathSum(self, grid):\n        return sum(map(sum, grid))\n"],
    },
    {
        "name": "add-two-numbers-lists",
        "entry_point": "Solution().addTwoNumbers",
        "test": "def check(candidate):\n    assert is_same_list(candidate(l1 = list_node([2,4,3]), l2 = list_node([5,6,4])), list_node([7,0,8]))\n"
        "    assert is_same_list(candidate(l1 = list_node([9,9]), l2 = list_node([1])), list_node([0,0,1]))\n",
        "correct": "class Solution:\n    def addTwoNumbers(self, l1, l2):\n        dummy = tail = ListNode()\n        carry = 0\n"
        "        while l1 or l2 or carry:\n            s = carry + (l1.val if l1 else 0) + (l2.val if l2 else 0)\n"
        "            carry, d = divmod(s, 10)\n            tail.next = tail = ListNode(d)\n"
        "            l1, l2 = l1 and l1.next, l2 and l2.next\n        return dummy.next\n",
        "wrong": [
            "class Solution:\n    def addTwoNumbers(self, l1, l2):\n        return l1\n",
            "class Solution:\n    def addTwoNumbers(self, l1, l2):\n        return [7, 0, 8]\n",
        ],
    },
    {
        "name": "own-listnode-class",
        "entry_point": "Solution().middleNode",
        "test": "def check(candidate):\n    assert is_same_list(candidate(head = list_node([1,2,3,4,5])), list_node([3,4,5]))\n"
        "    assert is_same_list(candidate(head = list_node([1,2,3,4,5,6])), list_node([4,5,6]))\n",
        "correct": "# Definition for singly-linked list.\nclass ListNode:\n    def __init__(self, val=0, next=None):\n"
        "        self.val = val\n        self.next = next\nclass Solution:\n    def middleNode(self, head):\n        slow = fast = head\n"
        "        while fast and fast.next:\n            slow, fast = slow.next, fast.next.next\n        return slow\n",
        "wrong": ["class Solution:\n    def middleNode(self, head):\n        return head.next\n"],
    },
    {
        "name": "nested-list-permutations",
        "entry_point": "Solution().permute",
        "test": "def check(candidate):\n    assert candidate(nums = [1,2,3]) == [[1,2,3],[1,3,2],[2,1,3],[2,3,1],[3,1,2],[3,2,1]]\n"
        "    assert candidate(nums = [0,1]) == [[0,1],[1,0]]\n",
        "correct": "class Solution:\n    def permute(self, nums):\n        return [list(p) for p in permutations(nums)]\n",
        "wrong": [
            "class Solution:\n    def permute(self, nums):\n        return list(permutations(nums))\n",  # tuples
            "class Solution:\n    def permute(self, nums):\n        return (list(p) for p in permutations(nums))\n",  # generator
        ],
    },
    {
        "name": "negative-numbers",
        "entry_point": "Solution().maxSubArray",
        "test": "def check(candidate):\n    assert candidate(nums = [-2,1,-3,4,-1,2,1,-5,4]) == 6\n    assert candidate(nums = [-1]) == -1\n",
        "correct": "class Solution:\n    def maxSubArray(self, nums):\n        best, cur = -inf, 0\n        for x in nums:\n"
        "            cur = max(x, cur + x)\n            best = max(best, cur)\n        return best\n",
        "wrong": ["class Solution:\n    def maxSubArray(self, nums):\n        return max(0, sum(nums))\n"],
    },
    {
        "name": "positional-args-and-big-int",
        "entry_point": "Solution().multiply",
        "test": "def check(candidate):\n    assert candidate('123', '456') == '56088'\n"
        "    assert candidate('99999999999999999999', '99999999999999999999') == '9999999999999999999800000000000000000001'\n",
        "correct": "class Solution:\n    def multiply(self, num1: str, num2: str) -> str:\n        return str(int(num1) * int(num2))\n",
        "wrong": [
            "class Solution:\n    def multiply(self, num1, num2):\n        return str(float(num1) * float(num2))\n"
        ],
    },
    {
        "name": "state-across-calls",
        "entry_point": "Solution().countCalls",
        "test": "def check(candidate):\n    assert candidate(x = 5) == 1\n    assert candidate(x = 5) == 2\n    assert candidate(x = 7) == 3\n",
        "correct": "class Solution:\n    def __init__(self):\n        self.calls = 0\n    def countCalls(self, x):\n        self.calls += 1\n"
        "        return self.calls\n",
        "wrong": ["class Solution:\n    def countCalls(self, x):\n        return 1\n"],
    },
    {
        "name": "set-and-dict-results",
        "entry_point": "Solution().charCount",
        "test": "def check(candidate):\n    assert candidate(s = 'aab') == {'a': 2, 'b': 1}\n    assert candidate(s = '') == {}\n",
        "correct": "class Solution:\n    def charCount(self, s):\n        return dict(Counter(s))\n",
        "wrong": [
            "class Solution:\n    def charCount(self, s):\n        return {'a': 2, 'b': 1}\n",
            "class D(dict):\n    def __eq__(self, o):\n        return True\nclass Solution:\n    def charCount(self, s):\n"
            "        return D()\n",
        ],
    },
    {
        "name": "sortedcontainers-like-leetcode",
        "entry_point": "Solution().medianSlidingWindow",
        "test": "def check(candidate):\n    assert candidate(nums = [1,3,-1,-3,5,3,6,7], k = 3) == [1.0,-1.0,-1.0,3.0,5.0,6.0]\n",
        "correct": "from sortedcontainers import SortedList\n\nclass Solution:\n    def medianSlidingWindow(self, nums, k):\n"
        "        window, out = SortedList(nums[:k]), []\n        for i in range(k, len(nums) + 1):\n"
        "            out.append((window[(k - 1) // 2] + window[k // 2]) / 2)\n            if i < len(nums):\n"
        "                window.remove(nums[i - k])\n                window.add(nums[i])\n        return out\n",
        "wrong": [
            "class Solution:\n    def medianSlidingWindow(self, nums, k):\n        return [float(x) for x in nums[:6]]\n"
        ],
    },
]
