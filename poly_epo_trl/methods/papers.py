"""The papers of the methods, in one place: each method's title, arXiv id and citation (``Method.paper``), which the
model card cites and the Hub tags name. A method file imports its own."""

DARLING_PAPER = {
    "title": "Jointly Reinforcing Diversity and Quality in Language Model Generations",
    "id": "2509.02534",
    "citation": """\
@article{li2025darling,
    title        = {{Jointly Reinforcing Diversity and Quality in Language Model Generations}},
    author       = {Li, Tianjian and Zhang, Yiming and Yu, Ping and Saha, Swarnadeep and Khashabi, Daniel and Weston,
                    Jason and Lanchantin, Jack and Wang, Tianlu},
    year         = 2025,
    eprint       = {arXiv:2509.02534},
}""",
}

F_GRPO_PAPER = {
    "title": "F-GRPO: Don't Let Your Policy Learn the Obvious and Forget the Rare",
    "id": "2602.06717",
    "citation": """\
@article{plyusov2026fgrpo,
    title        = {{F-GRPO: Don't Let Your Policy Learn the Obvious and Forget the Rare}},
    author       = {Plyusov, Daniil and Gorbatovski, Alexey and Shaposhnikov, Boris and Sinii, Viacheslav and
                    Malakhov, Alexey and Korotyshova, Daria and Gavrilov, Daniil},
    year         = 2026,
    eprint       = {arXiv:2602.06717},
}""",
}

IPS_PAPER = {
    "title": "Expected Return Causes Outcome-Level Mode Collapse in Reinforcement Learning and How to Fix It with "
    "Inverse Probability Scaling",
    "id": "2601.21669",
    "citation": """\
@article{ips2026,
    title        = {{Expected Return Causes Outcome-Level Mode Collapse in Reinforcement Learning and How to Fix It
                    with Inverse Probability Scaling}},
    year         = 2026,
    eprint       = {arXiv:2601.21669},
}""",
}

MAX_RL_PAPER = {
    "title": "Maximum Likelihood Reinforcement Learning",
    "id": "2602.02710",
    "citation": """\
@article{tajwar2026maxrl,
    title        = {{Maximum Likelihood Reinforcement Learning}},
    author       = {Tajwar, Fahim and others},
    year         = 2026,
    eprint       = {arXiv:2602.02710},
}""",
}

OUTCOME_PAPER = {
    "title": "Outcome-based Exploration for LLM Reasoning",
    "id": "2509.06941",
    "citation": """\
@article{song2025outcome,
    title        = {{Outcome-based Exploration for LLM Reasoning}},
    author       = {Song, Yuda and Kempe, Julia and Munos, Remi},
    year         = 2025,
    eprint       = {arXiv:2509.06941},
}""",
}

PASS_AT_K_PAPER = {
    "title": "Pass@k Training for Adaptively Balancing Exploration and Exploitation of Large Reasoning Models",
    "id": "2508.10751",
    "citation": """\
@article{chen2025passk,
    title        = {{Pass@k Training for Adaptively Balancing Exploration and Exploitation of Large Reasoning Models}},
    author       = {Chen, Zhipeng and Qin, Xiaobo and Wu, Youbin and Ling, Yue and Ye, Qinghao and Zhao, Wayne Xin
                    and Shi, Guang},
    year         = 2025,
    eprint       = {arXiv:2508.10751},
}""",
}

PKPO_PAPER = {
    "title": "Pass@K Policy Optimization: Solving Harder Reinforcement Learning Problems",
    "id": "2505.15201",
    "citation": """\
@article{walder2025pkpo,
    title        = {{Pass@K Policy Optimization: Solving Harder Reinforcement Learning Problems}},
    author       = {Walder, Christian and Karkhanis, Deep},
    year         = 2025,
    eprint       = {arXiv:2505.15201},
}""",
}

POLY_EPO_PAPER = {
    "title": "Poly-EPO: Training Exploratory Reasoning Models",
    "id": "2604.17654",
    "citation": """\
@article{orney2026polyepo,
    title        = {{Poly-EPO: Training Exploratory Reasoning Models}},
    author       = {Orney, Ifdita Hasan and Hamid, Jubayer Ibn and Ramanujam, Shreya S and Wu, Shirley and Hu, Hengyuan
                    and Goodman, Noah and Sadigh, Dorsa and Finn, Chelsea},
    year         = 2026,
    eprint       = {arXiv:2604.17654},
}""",
}

SETPO_PAPER = {
    "title": "SetPO: Set-Level Policy Optimization for Diversity-Preserving LLM Reasoning",
    "id": "2602.01062",
    "citation": """\
@article{li2026setpo,
    title        = {{SetPO: Set-Level Policy Optimization for Diversity-Preserving LLM Reasoning}},
    author       = {Li, Chenyi and Zhang, Yuan and Wang, Bo and Ma, Guoqing and Tang, Wei and Huang, Haoyang and
                    Duan, Nan},
    year         = 2026,
    eprint       = {arXiv:2602.01062},
}""",
}

UCPO_PAPER = {
    "title": "Uniform-Correct Policy Optimization: Breaking RLVR's Indifference to Diversity",
    "id": "2605.00365",
    "citation": """\
@article{lochab2026ucpo,
    title        = {{Uniform-Correct Policy Optimization: Breaking RLVR's Indifference to Diversity}},
    author       = {Lochab, Anamika and Li, Bolian and Zhang, Ruqi},
    year         = 2026,
    eprint       = {arXiv:2605.00365},
}""",
}

UNIQUENESS_PAPER = {
    "title": "Rewarding the Rare: Uniqueness-Aware RL for Creative Problem Solving in LLMs",
    "id": "2601.08763",
    "citation": """\
@article{hu2026rare,
    title        = {{Rewarding the Rare: Uniqueness-Aware RL for Creative Problem Solving in LLMs}},
    author       = {Hu, Zhiyuan and Wang, Yucheng and He, Yufei and Wu, Jiaying and Zhao, Yilun and Ng, See-Kiong and
                    Breazeal, Cynthia and Luu, Anh Tuan and Park, Hae Won and Hooi, Bryan},
    year         = 2026,
    eprint       = {arXiv:2601.08763},
}""",
}

UNLIKELINESS_PAPER = {
    "title": "Rewarding the Unlikely: Lifting GRPO Beyond Distribution Sharpening",
    "id": "2506.02355",
    "citation": """\
@article{he2025unlikely,
    title        = {{Rewarding the Unlikely: Lifting GRPO Beyond Distribution Sharpening}},
    author       = {He, Andre Wang and Fried, Daniel and Welleck, Sean},
    year         = 2025,
    eprint       = {arXiv:2506.02355},
}""",
}
